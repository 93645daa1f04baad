// One list page's place and its buttons, as every server-paged list of the console shows them: the
// range shown of the total, and Previous and Next that move the list's offset.

export interface Pagination { limit: number; offset: number; total: number; nextOffset: number | null }

export function Pager({ pagination, shown, none, pageSize, onOffset }: { pagination: Pagination; shown: number; none: string; pageSize: number; onOffset(offset: number): void }) {
  return (
    <div className="row">
      <span role="status" aria-label="Page">{pagination.total === 0 ? none : `${pagination.offset + 1}–${pagination.offset + shown} of ${pagination.total}`}</span>
      <button type="button" disabled={pagination.offset === 0} onClick={() => onOffset(Math.max(0, pagination.offset - pageSize))}>Previous page</button>
      <button type="button" disabled={pagination.nextOffset === null} onClick={() => onOffset(pagination.nextOffset ?? 0)}>Next page</button>
    </div>
  );
}
