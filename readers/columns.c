/*
 * columns.c: a listing printed two ways from one description: the table
 * (a heading, a line per entry) and --json's array of objects.  A column
 * may be the table's only or --json's only where the two say it
 * differently.  Invoking user, no privilege.
 */
#include <inttypes.h>
#include <string.h>

#include "readers.h"

static void put_cell(const struct col *col, const struct cell *cell)
{
	switch (col->kind) {
	case COL_TEXT: {
		int width = col->width;
		if (cell->prefix) {
			fputs(cell->prefix, stdout);
			width -= (int)strlen(cell->prefix);
		}
		put_text(stdout, cell->text ? cell->text : col->none, width, col->cut);
		break;
	}
	case COL_COUNT:
		printf("%*" PRIu64, col->width, cell->count);
		break;
	case COL_INT:
		printf("%*" PRId64, col->width, cell->value);
		break;
	case COL_HOURS:
	case COL_REAL:
		printf("%*.*f", col->width, col->kind == COL_HOURS ? 3 : col->decimals, cell->real);
		break;
	case COL_PERCENT:
		printf("%*.1f%%", col->width - 1, cell->real);
		break;
	default:
		break;
	}
}

/* The heading (cells NULL) or an entry's line: the table's columns. */
static void put_line(const struct listing *l, const struct cell *cells)
{
	bool first = true;

	for (size_t c = 0; c < l->cols_count; c++) {
		const struct col *col = &l->cols[c];

		if (!col->title)
			continue;
		/* the spaces before a column: none before the first */
		for (int k = first ? 0 : (col->gap ? col->gap : 1); k > 0; k--)
			putchar(' ');
		first = false;
		if (cells)
			put_cell(col, &cells[c]);
		else
			printf(col->kind == COL_TEXT ? "%-*s" : "%*s", col->width, col->title);
	}
	putchar('\n');
}

void listing_table(const struct listing *l)
{
	struct cell cells[LISTING_COLS_MAX];
	size_t n = l->count < l->table_max ? l->count : l->table_max;

	put_line(l, NULL);
	if (l->count == 0 && l->empty)
		printf("%s\n", l->empty);
	for (size_t i = 0; i < n; i++) {
		memset(cells, 0, sizeof(cells));
		l->cells(l->ctx, i, false, cells);
		put_line(l, cells);
	}
	if (l->more && l->count > n)
		printf("(%zu more)\n", l->count - n);
}

static json_t *cell_json(const struct col *col, const struct cell *cell)
{
	if (cell->null)
		return json_null();
	switch (col->kind) {
	case COL_TEXT:
		return cell->text ? json_string(cell->text) : json_null();
	case COL_COUNT:
		return json_integer((json_int_t)cell->count);
	case COL_INT:
		return json_integer(cell->value);
	case COL_HOURS:
	case COL_REAL:
	case COL_PERCENT:
		return json_round(cell->real, col->kind == COL_HOURS ? 6 : col->json_decimals);
	default:
		return cell->json;
	}
}

json_t *listing_json(const struct listing *l)
{
	struct cell cells[LISTING_COLS_MAX];
	json_t *arr = json_array();
	size_t n = l->count < l->json_max ? l->count : l->json_max;

	for (size_t i = 0; i < n; i++) {
		json_t *e = json_object();

		memset(cells, 0, sizeof(cells));
		l->cells(l->ctx, i, true, cells);
		for (size_t c = 0; c < l->cols_count; c++)
			if (l->cols[c].key && !cells[c].omit)
				json_object_set_new(
					e, l->cols[c].key, cell_json(&l->cols[c], &cells[c]));
		json_array_append_new(arr, e);
	}
	return arr;
}
