#include "low.h"

#include "high.h"

int low_work(int x)
{
    return high_done(x) + 1; /* the call upward that closes the circle */
}
