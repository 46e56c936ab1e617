/* A use upward with no circle: high/ never calls back. */
#include "low.h"

#include "high.h"

int low_work(int x)
{
    return high_go(x);
}
