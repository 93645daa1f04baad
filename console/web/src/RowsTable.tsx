// Records as a table, one column per field: the records preview and a published query's results.

/** A field's value as a cell shows it: strings as they are, anything else as JSON. */
export const cellText = (value: unknown) => (value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value));

export function RowsTable({ label, columns, rows }: { label: string; columns: string[]; rows: Array<Record<string, unknown>> }) {
  return (
    <table aria-label={label}>
      <thead><tr>{columns.map((column) => <th key={column}>{column}</th>)}</tr></thead>
      <tbody>
        {rows.map((row, index) => <tr key={index}>{columns.map((column) => <td key={column}>{cellText(row[column])}</td>)}</tr>)}
      </tbody>
    </table>
  );
}
