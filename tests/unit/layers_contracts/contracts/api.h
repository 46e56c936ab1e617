/* A contract that reaches up: check_layers must see the include. */
#ifndef API_H
#define API_H
#include "low.h"
#define API_VERSION 1
#endif
