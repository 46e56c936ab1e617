#ifndef LOW_H
#define LOW_H
int low_work(int x);
#endif
