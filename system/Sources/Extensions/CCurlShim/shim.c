#include "CCurlShim.h"

CURLcode CCurl_set_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}

CURLcode CCurl_set_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}

CURLcode CCurl_set_headers(CURL *easy, struct curl_slist *headers) {
    return curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
}

CURLcode CCurl_set_error_buffer(CURL *easy, char *buffer) {
    return curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, buffer);
}

CURLcode CCurl_set_body(CURL *easy, const void *bytes, long size) {
    CURLcode code = curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, size);
    if (code != CURLE_OK) return code;
    return curl_easy_setopt(easy, CURLOPT_COPYPOSTFIELDS, bytes);
}

CURLcode CCurl_set_write_callback(CURL *easy, CCurl_data_callback callback, void *context) {
    CURLcode code = curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, callback);
    if (code != CURLE_OK) return code;
    return curl_easy_setopt(easy, CURLOPT_WRITEDATA, context);
}

CURLcode CCurl_set_header_callback(CURL *easy, CCurl_data_callback callback, void *context) {
    CURLcode code = curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, callback);
    if (code != CURLE_OK) return code;
    return curl_easy_setopt(easy, CURLOPT_HEADERDATA, context);
}

CURLcode CCurl_get_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}

CURLcode CCurl_get_string(CURL *easy, CURLINFO info, const char **value) {
    return curl_easy_getinfo(easy, info, value);
}

CURLcode CCurl_message_result(const CURLMsg *message) {
    return message->data.result;
}
