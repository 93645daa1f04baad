import type { ReactNode } from 'react';

// Rows as a table, one column per field: the records preview, a published query's results, and the
// Usage page's lists (whose columns may draw a cell themselves: a button, a link).

/** A field's value as a cell shows it: strings as they are, anything else as JSON. */
export const cellText = (value: unknown) => (value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value));

export function RowsTable<Row extends Record<string, unknown>>({ label, columns, rows, cells = {} }: { label: string; columns: string[]; rows: Row[]; cells?: Record<string, (row: Row) => ReactNode> }) {
  return (
    <table aria-label={label}>
      <thead><tr>{columns.map((column) => <th key={column}>{column}</th>)}</tr></thead>
      <tbody>
        {rows.map((row, index) => <tr key={index}>{columns.map((column) => <td key={column}>{cells[column] ? cells[column](row) : cellText(row[column])}</td>)}</tr>)}
      </tbody>
    </table>
  );
}
