#ifndef CYUV_SHIM_H
#define CYUV_SHIM_H
#include <libyuv/convert_from_argb.h>
#include <libyuv/planar_functions.h>
#endif
