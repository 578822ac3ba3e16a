#ifndef CCURL_SHIM_H_INCLUDED
#define CCURL_SHIM_H_INCLUDED
// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one function
// per type of value, prefixed CCurl_. Each returns what libcurl returned.
#include <curl/curl.h>

/// Receives a response's body (CURLOPT_WRITEFUNCTION) or its header lines
/// (CURLOPT_HEADERFUNCTION): `size * count` bytes at `data`; returns how many it took (fewer
/// ends the transfer).
typedef size_t (*CCurl_data_callback)(char *data, size_t size, size_t count, void *context);

CURLcode CCurl_set_long(CURL *easy, CURLoption option, long value);
/// libcurl copies the string (except CURLOPT_POSTFIELDS, which this is not for).
CURLcode CCurl_set_string(CURL *easy, CURLoption option, const char *value);
/// CURLOPT_HTTPHEADER: the list must outlive the transfer.
CURLcode CCurl_set_headers(CURL *easy, struct curl_slist *headers);
/// CURLOPT_ERRORBUFFER: at least CURL_ERROR_SIZE bytes, alive for the transfer.
CURLcode CCurl_set_error_buffer(CURL *easy, char *buffer);
/// The body sent (CURLOPT_POSTFIELDSIZE then CURLOPT_COPYPOSTFIELDS: copied, may hold NULs).
CURLcode CCurl_set_body(CURL *easy, const void *bytes, long size);
CURLcode CCurl_set_write_callback(CURL *easy, CCurl_data_callback callback, void *context);
CURLcode CCurl_set_header_callback(CURL *easy, CCurl_data_callback callback, void *context);

CURLcode CCurl_get_long(CURL *easy, CURLINFO info, long *value);
/// The string belongs to the handle: copy it before curl_easy_cleanup.
CURLcode CCurl_get_string(CURL *easy, CURLINFO info, const char **value);

/// The result of a finished transfer in a message of curl_multi_info_read (a union's member).
CURLcode CCurl_message_result(const CURLMsg *message);

#endif
