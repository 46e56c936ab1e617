#include "high.h"

#include "low.h"

static int helper(int x)
{
    return x * 2;
}

int high_done(int x)
{
    return helper(x);
}

int high_entry(int x)
{
    return low_work(x);
}
