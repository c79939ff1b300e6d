/* nvml_errors.h: the real NVML's nvmlErrorString texts, without the library. */
#pragma once

#include "nvml/nvml.h"

/* Returns nvmlErrorString's text for rc, as the real library words it; never NULL. */
const char *nvml_error_string(int rc);
