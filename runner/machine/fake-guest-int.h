/* SPDX-License-Identifier: MIT */
/* Inside a guest over a local directory (fake-guest.c: the root; fake-proc.c: its processes;
 * fake-devices.c: its disks, shares and channel ports). */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "fake-guest.h"

#define BUSYBOX "/bin/busybox"
/* the guest shell's profile (its stand-ins for a kernel's features) and the hung programs */
#define PROFILE   "/etc/ferry-fake.sh"
#define HANGS     "/etc/ferry-fake-hang.sh"
#define MAX_DISKS 16
#define MAX_PORTS 4

struct fake_disk {
	char *serial, *name;
	char *loop; /* the host's loop device, "/dev/loop3" */
};

struct fake_port {
	char *name;
	char *fifo; /* host path of the guest's FIFO (through the init's root) */
	int sock;   /* the relay's end */
	pthread_t thread;
	atomic_bool stop;
	bool running;
};

struct fake_root {
	char *dir;
	char *proc_root; /* /proc/HOLDER/root: the guest's root with its mounts, from the host */
	pid_t holder;    /* the guest's init (fake-init.c) */
	int ctl;         /* the init's requests socket: closing it ends the init */
	int ns_fd;       /* the guest's mount namespace */
	ino_t ns_ino;
	int boot_mounts;  /* /proc, /dev, /tmp, /run, /bin and the busybox binary */
	unsigned n_names; /* device names given so far: vdb, vdc, ... */
	struct fake_disk disks[MAX_DISKS];
	size_t n_disks;
	struct fake_port ports[MAX_PORTS];
	size_t n_ports;
};

/* execve()'s vectors take char *: writable "sh", "-c" and the guest's PATH= (fake-guest.c) */
extern char fake_arg_sh[], fake_arg_c[], fake_env_path[];

/* Kill every process in the guest's namespace but its init, a few rounds until none is left. */
void fake_procs_kill_all(const struct fake_root *r);
/* The host path of guest path p, through the init's root (so inside the guest's mounts). */
char *fake_host_path(const struct fake_root *r, const char *p);
/* Unplug disk i: its node, its /sys entry, its loop device. 0 or -1 with *err. */
int fake_disk_remove(struct fake_root *r, size_t i, char **err);
/* Stop the relay of port p, if it runs. */
void fake_port_end(struct fake_port *p);
