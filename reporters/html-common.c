/* SPDX-License-Identifier: MIT */
/*
 * The HTML reports' shared pieces (html-common.h). The charts are SVG written by hand: the page
 * must open from a CI artifact or a mail with no network and run no script, which rules out
 * every charting library (they draw in the browser with JavaScript); what is drawn (points,
 * bars, lines on linear axes) is a few dozen lines of SVG.
 */
#include <math.h>
#include <string.h>

#include "html-common.h"
#include "reporters.h"

void html_text(FILE *f, const char *s)
{
	_cleanup_free_ char *clean = report_clean_text(s);
	for (const char *p = clean; *p; p++) {
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*p, f);
		}
	}
}

static const char style[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1100px;"
    "padding:0 1em;color:#222}"
    "h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ccc;margin-top:2em}"
    "h3{font-size:1.05em}"
    "table{border-collapse:collapse;margin:.5em 0 1em}"
    "td,th{border:1px solid #ddd;padding:2px 6px;text-align:right;vertical-align:top}"
    "td.l,th.l{text-align:left}th{background:#f4f4f4}"
    ".chart{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}"
    "svg{background:#fff;border:1px solid #eee;font:11px system-ui,sans-serif}"
    "svg .grid{stroke:#e6e6e6}svg .zero{stroke:#555}svg text.tick{fill:#666}"
    "svg .run{fill:#999;fill-opacity:.6}svg .boot{fill:#1f77b4;fill-opacity:.8}"
    "svg .ci{stroke:#d62728;stroke-width:3}svg .mean{stroke:#d62728;stroke-width:2}"
    "svg .thr{fill:#2ca02c;fill-opacity:.12}svg .thrl{stroke:#2ca02c;stroke-dasharray:4 3}"
    "svg .p-prepare{fill:#8da0cb}svg .p-transfer{fill:#66c2a5}svg .p-finalize{fill:#fc8d62}"
    "svg .p-verify{fill:#e5c494}svg .p-cleanup{fill:#c7c7c7}"
    "svg .v-regressed{stroke:#d62728;fill:#d62728}svg .v-improved{stroke:#2ca02c;fill:#2ca02c}"
    "svg .v-unchanged{stroke:#555;fill:#555}svg .v-inconclusive{stroke:#ff7f0e;fill:#ff7f0e}"
    "svg .series{fill:none;stroke:#1f77b4;stroke-width:1.5}svg .pt{fill:#1f77b4}"
    "svg .level{stroke:#9467bd;stroke-width:2}svg .cp{stroke:#d62728;stroke-dasharray:5 3}"
    "svg .cpp{stroke:#ff7f0e;stroke-dasharray:2 3}"
    ".legend span{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 .8em;"
    "vertical-align:middle}"
    ".verdict-regressed{color:#b00}.verdict-improved{color:#070}"
    ".verdict-inconclusive{color:#a60}.bad{color:#b00}"
    "pre{background:#f6f6f6;padding:.5em;overflow:auto;max-height:20em}"
    "footer{margin-top:3em;color:#777;font-size:.9em}";

void html_page_begin(FILE *f, const char *title)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      /* nothing may be fetched: no script, style or image from anywhere */
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'; img-src data:\">\n<title>",
	      f);
	html_text(f, title);
	fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", style);
	html_text(f, title);
	fputs("</h1>\n", f);
}

void html_page_end(FILE *f)
{
	fputs(
	    "<footer>Written by ferry: one static file, no script, nothing fetched. Every chart's "
	    "numbers are in the table beside it and in each mark's tooltip.</footer>\n"
	    "</body>\n</html>\n",
	    f);
}

void html_seconds(FILE *f, double s)
{
	if (!isfinite(s)) {
		fputs("\xe2\x80\x94", f);
		return;
	}
	double v = fabs(s) < 1 ? s * 1000 : s;
	const char *unit = fabs(s) < 1 ? "ms" : "s";
	double a = fabs(v);
	int d = a >= 100 ? 0 : a >= 10 ? 1 : 2;
	fprintf(f, "%.*f\xc2\xa0%s", d, v, unit);
}

void html_pct(FILE *f, double x)
{
	if (isfinite(x))
		fprintf(f, "%+.1f%%", 100 * x);
	else
		fputs("\xe2\x80\x94", f);
}

static double nice_step(double range)
{
	double raw = range / 5, mag = pow(10, floor(log10(raw)));
	double r = raw / mag;
	return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

void html_axis_init(struct html_axis *a, double lo, double hi, double x0, double x1)
{
	if (!isfinite(lo) || !isfinite(hi))
		lo = 0, hi = 1;
	if (hi <= lo) {
		double pad = lo != 0 ? fabs(lo) * 0.1 : 1;
		lo -= pad, hi += pad;
	}
	double step = nice_step(hi - lo);
	a->lo = floor(lo / step) * step;
	a->hi = ceil(hi / step) * step;
	if (a->hi <= a->lo)
		a->hi = a->lo + step;
	a->x0 = x0;
	a->x1 = x1;
}

double html_axis_px(const struct html_axis *a, double v)
{
	if (v < a->lo)
		v = a->lo;
	if (v > a->hi)
		v = a->hi;
	return a->x0 + (v - a->lo) / (a->hi - a->lo) * (a->x1 - a->x0);
}

double html_axis_step(const struct html_axis *a)
{
	return nice_step(a->hi - a->lo);
}

void html_axis_draw_x(FILE *f, const struct html_axis *a, double top, double y, const char *suffix,
		      double scale)
{
	double step = html_axis_step(a);
	for (int i = 0; i <= 20; i++) {
		double v = a->lo + i * step;
		if (v > a->hi + step / 1000)
			break;
		if (fabs(v) < step / 1000)
			v = 0;
		double x = html_axis_px(a, v);
		fprintf(f, "<line class=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
			v == 0 ? "zero" : "grid", x, top, x, y);
		fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x,
			y + 13);
		fprintf(f, "%g%s", v * scale, suffix);
		fputs("</text>\n", f);
	}
}

void html_axis_draw_y(FILE *f, const struct html_axis *a, double x, double right,
		      const char *suffix, double scale)
{
	double step = html_axis_step(a);
	for (int i = 0; i <= 20; i++) {
		double v = a->lo + i * step;
		if (v > a->hi + step / 1000)
			break;
		if (fabs(v) < step / 1000)
			v = 0;
		double y = html_axis_px(a, v);
		fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
			x, y, right, y);
		fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", x - 3,
			y + 4);
		fprintf(f, "%g%s", v * scale, suffix);
		fputs("</text>\n", f);
	}
}
