/* The report's entry point as a program of its own, so the report tests do
 * not depend on the launcher: report_driver [report options] LOG. */
#include "report.h"

int main(int argc, char **argv)
{
    return report_main(argc, argv);
}
