/* SPDX-License-Identifier: MIT */
/*
 * Every limit of the plan language in one place: the key tables (keys.c), the rules table
 * (rules.c), the reader (load.c) and the machine layer (runner/machine/libvirt/vm.c) all take their
 * bounds from here, so `ferry validate` refuses exactly what a run would refuse. ferry(1) LIMITS
 * lists them.
 */
#pragma once

#include <stdint.h>

/* ---- reading a plan: untrusted input stays linear and bounded ---- */
#define PLAN_MAX_FILE          (4 * 1024 * 1024) /* bytes per plan file */
#define PLAN_MAX_INCLUDE_DEPTH 16                /* files in one include chain */
#define PLAN_MAX_DEPTH         64                /* nested mappings and lists in one file */
#define PLAN_MAX_NODES         100000            /* YAML nodes of all files (aliases count) */

/* ---- VMs: what libvirt and QEMU accept (vm_config_validate() checks the same) ---- */
#define PLAN_VCPUS_MAX      255u                  /* QEMU's i440fx/q35 without x2apic */
#define PLAN_MEMORY_MIN     (UINT64_C(64) << 20)  /* the built-in guest needs 64 MiB */
#define PLAN_MEMORY_MAX     (UINT64_C(1) << 42)   /* 4 TiB: refused above */
#define PLAN_MEMORY_WARN    (UINT64_C(256) << 30) /* warned above: few hosts have it */
#define PLAN_NIC_QUEUES_MAX 64u
/* network method: TCP connections at once */
#define PLAN_NETWORK_STREAMS_MAX 64u

/* ---- disks and datasets ---- */
#define PLAN_DISK_SIZE_MIN     (UINT64_C(1) << 20) /* 1 MiB */
#define PLAN_DISK_SIZE_MAX     (UINT64_C(1) << 44) /* 16 TiB: refused above */
#define PLAN_DISK_FULL_WARN    (UINT64_C(1) << 40) /* a written-out image above 1 TiB: warned */
#define PLAN_DATASET_MAX       (UINT64_C(1) << 44) /* 16 TiB of generated files: refused above */
#define PLAN_DATASET_WARN      (UINT64_C(1) << 40) /* 1 TiB: warned */
#define PLAN_DATASET_FILES_MAX 10000000u
