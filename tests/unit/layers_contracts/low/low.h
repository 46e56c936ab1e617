#ifndef LOW_H
#define LOW_H
#include "high.h" /* upward: a header of a folder above */
int low_work(int x);
#endif
