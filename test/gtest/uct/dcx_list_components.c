/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Lists the UCT components the process sees, and the memory domains of the
 * dcx component: "component <name>" and "md <name>" lines.  Used by
 * test_load_check.sh with libuct_dcx.so preloaded; it opens no interface,
 * so it runs even where the UCX it is shown is not the one dcx expects.
 */
#include <uct/api/uct.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    uct_md_resource_desc_t rsc[64];
    uct_component_attr_t attr;
    uct_component_h *components;
    unsigned i, j, count;
    ucs_status_t status;

    status = uct_query_components(&components, &count);
    if (status != UCS_OK) {
        fprintf(stderr, "uct_query_components: %s\n",
                ucs_status_string(status));
        return 1;
    }

    for (i = 0; i < count; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                          UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        status = uct_component_query(components[i], &attr);
        if (status != UCS_OK) {
            fprintf(stderr, "uct_component_query: %s\n",
                    ucs_status_string(status));
            return 1;
        }
        printf("component %s\n", attr.name);
        if (strcmp(attr.name, "dcx") ||
            (attr.md_resource_count > sizeof(rsc) / sizeof(rsc[0]))) {
            continue;
        }

        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = rsc;
        if (uct_component_query(components[i], &attr) != UCS_OK) {
            return 1;
        }
        for (j = 0; j < attr.md_resource_count; ++j) {
            printf("md %s\n", rsc[j].md_name);
        }
    }

    uct_release_component_list(components);
    return 0;
}
