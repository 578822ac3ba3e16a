#ifndef CSDBUS_SHIM_H
#define CSDBUS_SHIM_H
#include <systemd/sd-bus.h>
#endif
