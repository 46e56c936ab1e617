/* Includes the contract from above it: allowed. */
#include "low.h"

#include "api.h"

int low_work(int x)
{
    return x + API_VERSION;
}
