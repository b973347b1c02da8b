/* SPDX-License-Identifier: MIT */
/*
 * The host ids a guest's virtiofs share is confined to (ferry-virtiofsd, share.c): virtiofsd
 * runs in a user namespace whose ids 0..SHARE_IDS_COUNT-1 are the host's SHARE_IDS_BASE.. (inside
 * systemd's container range, owned by no account): whatever the guest makes through the share
 * belongs to one of them, never to root or another user of the host. What ferry stages for
 * such a share is owned by SHARE_IDS_BASE (the namespace's root), so that virtiofsd can read
 * and unlink it.
 */
#pragma once

#define SHARE_IDS_BASE  1610612736u /* 0x60000000 */
#define SHARE_IDS_COUNT 65536u
