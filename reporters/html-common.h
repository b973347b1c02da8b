/* SPDX-License-Identifier: MIT */
/*
 * What the HTML reports (run, compare, trend) share: escaping of untrusted text for element
 * content and attribute values, the page's head (inline CSS, no script, no external resource)
 * and foot, a linear axis with readable ticks, and numbers in readable units. Internal to the
 * reporters; everything is written in the C numeric locale (the caller enters it).
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

/* Untrusted text as HTML: cleaned (report_clean_text()), then & < > " ' escaped, so that it is
 * safe both as element content and inside a quoted attribute value. */
void html_text(FILE *f, const char *s);

/* <!DOCTYPE html>, <head> with the title (escaped) and the style sheet, <body>, <h1>. */
void html_page_begin(FILE *f, const char *title);
/* A note on how the page was made, </body></html>. */
void html_page_end(FILE *f);

/* Seconds for people, 3 significant digits ("1.23 s", "456 ms"). */
void html_seconds(FILE *f, double s);
/* A relative change as a signed percentage ("+12.3%"). */
void html_pct(FILE *f, double x);

/* A linear axis from lo to hi (lo < hi, both finite) drawn over the pixels [x0, x1]. */
struct html_axis {
	double lo, hi;
	double x0, x1;
};
/* An axis over [lo, hi] widened to round ticks (a handful of them); lo == hi is widened. */
void html_axis_init(struct html_axis *a, double lo, double hi, double x0, double x1);
/* The pixel of value v (clamped to the axis). */
double html_axis_px(const struct html_axis *a, double v);
/* Tick step of the axis (round: 1, 2 or 5 times a power of ten). */
double html_axis_step(const struct html_axis *a);
/*
 * Ticks and grid lines of a horizontal axis at y (the grid runs from top to y); each label is
 * the value times scale, then suffix ("", "%", " s").
 */
void html_axis_draw_x(FILE *f, const struct html_axis *a, double top, double y, const char *suffix,
		      double scale);
/* The same for a vertical axis (values upward, from y = a->x0 at the bottom to a->x1 at the top),
 * labels at x, grid from x to right. */
void html_axis_draw_y(FILE *f, const struct html_axis *a, double x, double right,
		      const char *suffix, double scale);
