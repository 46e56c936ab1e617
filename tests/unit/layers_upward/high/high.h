#ifndef HIGH_H
#define HIGH_H
int high_go(int x);
#endif
