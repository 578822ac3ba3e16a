// libcurl from Debian (libcurl4-openssl-dev): TLS through OpenSSL with the system's
// certificates. Its variadic calls are wrapped with fixed types in CCurlShim.
#include <curl/curl.h>
