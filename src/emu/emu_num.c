/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the numbers of the verbs objects DEVX commands name
 * (emu_devx.h).  A PD, CQ or SRQ joins the map when created and leaves it
 * when destroyed; a command finds the object by its device, kind and
 * number.  The map is the process's, under its own lock, below every
 * object that joins it and every command that reads it.
 */
#include "emu/emu_devx.h"

#include <stdlib.h>

#define EMU_NUM_BUCKETS 64u

typedef struct emu_num {
    emu_dev_t *dev;
    emu_num_kind_t kind;
    uint32_t num;
    void *obj;
    struct emu_num *next;
} emu_num_t;

static pthread_mutex_t emu_num_lock = PTHREAD_MUTEX_INITIALIZER;
static emu_num_t *emu_nums[EMU_NUM_BUCKETS];

static unsigned emu_num_bucket(emu_num_kind_t kind, uint32_t num)
{
    return (num * 3u + (unsigned)kind) % EMU_NUM_BUCKETS;
}

void emu_num_add(emu_dev_t *dev, emu_num_kind_t kind, uint32_t num, void *obj)
{
    emu_num_t *n = malloc(sizeof(*n));
    unsigned b   = emu_num_bucket(kind, num);

    if (n == NULL) {
        /* a command naming it fails as if the number were unknown */
        emu_warn("%s: no memory to map object number 0x%x for DEVX",
                 dev->ibdev.name, num);
        return;
    }
    n->dev  = dev;
    n->kind = kind;
    n->num  = num;
    n->obj  = obj;
    pthread_mutex_lock(&emu_num_lock);
    n->next     = emu_nums[b];
    emu_nums[b] = n;
    pthread_mutex_unlock(&emu_num_lock);
}

void emu_num_del(emu_dev_t *dev, emu_num_kind_t kind, uint32_t num, void *obj)
{
    emu_num_t **p, *n;

    pthread_mutex_lock(&emu_num_lock);
    for (p = &emu_nums[emu_num_bucket(kind, num)]; (n = *p) != NULL;
         p = &n->next) {
        if ((n->obj == obj) && (n->dev == dev) && (n->kind == kind)) {
            *p = n->next;
            free(n);
            break;
        }
    }
    pthread_mutex_unlock(&emu_num_lock);
}

void *emu_num_find(emu_dev_t *dev, emu_num_kind_t kind, uint32_t num)
{
    void *obj = NULL;
    emu_num_t *n;

    pthread_mutex_lock(&emu_num_lock);
    for (n = emu_nums[emu_num_bucket(kind, num)]; n != NULL; n = n->next) {
        if ((n->num == num) && (n->dev == dev) && (n->kind == kind)) {
            obj = n->obj; /* the newest of a number reused */
            break;
        }
    }
    pthread_mutex_unlock(&emu_num_lock);
    return obj;
}
