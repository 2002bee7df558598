/*
 * Test-local: the mlx5 test binary links the device-layer dispatch
 * (src/common/dcx_dev.c) without the soft backend.  The tests never ask for
 * soft devices; these definitions only satisfy the linker and refuse
 * loudly if reached.
 */
#include "dcx_dev.h"

#include <errno.h>
#include <string.h>

int dcx_soft_list(const dcx_dev_list_params_t *params, dcx_dev_info_t *out,
                  unsigned max, unsigned *count_p)
{
    dcx_error("soft backend is not linked into the mlx5 test binary");
    *count_p = 0;
    return ENODEV;
}

int dcx_soft_open(const dcx_dev_info_t *info, dcx_dev_t **dev_p)
{
    dcx_error("%s: soft backend is not linked into the mlx5 test binary",
              info->name);
    return ENODEV;
}

void dcx_soft_limits_default(dcx_soft_limits_t *limits)
{
    memset(limits, 0, sizeof(*limits));
}
