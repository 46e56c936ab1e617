#include "nvtx.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <nvtx3/nvToolsExt.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static nvtxDomainHandle_t domain;
static bool attached;

static void nvtx_init(void)
{
    attached = getenv("NVTX_INJECTION64_PATH") != NULL;
    if (attached)
        domain = nvtxDomainCreateA("p2pshim");
}

bool nvtx_on(void)
{
    pthread_once(&once, nvtx_init);
    return attached;
}

/* The event attributes for an ASCII message formatted into text. */
static nvtxEventAttributes_t message(char *text, size_t size, const char *fmt, va_list ap)
{
    vsnprintf(text, size, fmt, ap);
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = text;
    return a;
}

void nvtx_mark(const char *fmt, ...)
{
    if (!nvtx_on())
        return;
    char text[128];
    va_list ap;
    va_start(ap, fmt);
    nvtxEventAttributes_t a = message(text, sizeof text, fmt, ap);
    va_end(ap);
    nvtxDomainMarkEx(domain, &a);
}

bool nvtx_range_push(const char *fmt, ...)
{
    if (!nvtx_on())
        return false;
    char text[128];
    va_list ap;
    va_start(ap, fmt);
    nvtxEventAttributes_t a = message(text, sizeof text, fmt, ap);
    va_end(ap);
    nvtxDomainRangePushEx(domain, &a);
    return true;
}

void nvtx_range_pop(void)
{
    nvtxDomainRangePop(domain);
}
