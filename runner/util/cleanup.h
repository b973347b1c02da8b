/* SPDX-License-Identifier: MIT */
/*
 * Cleanup functions for the handles of the libraries ferry uses, for _cleanup_(): one place, so
 * that no file defines its own. ferry's own types declare theirs beside the type, in their header
 * (DEFINE_TRIVIAL_CLEANUP_FUNC(struct plan *, plan_free) in plan.h, ...). libvirt's are in the
 * libvirt driver's vm.h: util/ does not include libvirt.
 */
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <jansson.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>
#include <openssl/evp.h>
#include <yaml.h>

#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(xmlDocPtr, xmlFreeDoc)
DEFINE_TRIVIAL_CLEANUP_FUNC(xmlXPathContextPtr, xmlXPathFreeContext)
DEFINE_TRIVIAL_CLEANUP_FUNC(xmlXPathObjectPtr, xmlXPathFreeObject)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct archive *, archive_read_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct archive *, archive_write_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct archive_entry *, archive_entry_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_MD_CTX *, EVP_MD_CTX_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_CIPHER_CTX *, EVP_CIPHER_CTX_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)

/* json_decrefp() comes with jansson (>= 2.10, for its json_auto_t). */

/* yaml_parser_t and yaml_document_t live on the stack: their cleanups take the object. */
static inline void yaml_parser_deletep(yaml_parser_t *p)
{
	yaml_parser_delete(p);
}
static inline void yaml_document_deletep(yaml_document_t *d)
{
	yaml_document_delete(d);
}
