/* A fixture header above low/. */
#ifndef HIGH_H
#define HIGH_H
struct high_thing {
    int x;
};
#endif
