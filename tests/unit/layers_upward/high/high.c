#include "high.h"

int high_go(int x)
{
    return x + 1;
}
