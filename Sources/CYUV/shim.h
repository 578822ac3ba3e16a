#ifndef CYUV_SHIM_H
#define CYUV_SHIM_H
#include <libyuv/convert.h>
#include <libyuv/convert_from_argb.h>
#include <libyuv/planar_functions.h>
#include <libyuv/scale.h>
#include <libyuv/rotate.h>
#include <libyuv/compare.h>
#endif
