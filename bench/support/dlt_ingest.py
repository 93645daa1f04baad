"""The dlt peer of the ingest bench (bench/ingest.ts runs it in the bench's venv, bench/support/dlt.ts).

dlt's rest_api source reads the bench's local paginated API with the same cursor pagination Weft
uses (cursor in the `cursor` query parameter, next cursor at `next_cursor`, 1,000 records a page)
and loads into a table of the same PostgreSQL, with dlt's defaults for postgres (append,
insert_values files, its own load threads). The last stdout line is JSON: the seconds
pipeline.run took (extract, normalize and load; interpreter start and imports excluded), the rows
in the loaded table, the CPU seconds of pipeline.run (this process's threads and any child
processes) and the process's peak RSS.
"""
import argparse
import json
import resource
import time

import dlt
from dlt.sources.helpers.rest_client.paginators import JSONResponseCursorPaginator
from dlt.sources.rest_api import rest_api_source


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="the records URL, e.g. http://127.0.0.1:PORT/scale/100000/records")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--pipelines-dir", required=True)
    parser.add_argument("--page-size", type=int, default=1000)
    parser.add_argument("--loader-file-format", default=None, help="e.g. csv (COPY) instead of dlt's default for postgres, insert_values")
    args = parser.parse_args()

    base_url, _, path = args.url.rpartition("/")
    source = rest_api_source(
        {
            "client": {
                "base_url": base_url + "/",
                "paginator": JSONResponseCursorPaginator(cursor_path="next_cursor", cursor_param="cursor"),
            },
            "resource_defaults": {"write_disposition": "append", "primary_key": "id"},
            "resources": [
                {
                    "name": args.table,
                    "endpoint": {"path": path, "params": {"limit": args.page_size}, "data_selector": "data"},
                }
            ],
        }
    )
    pipeline = dlt.pipeline(
        pipeline_name=f"weft_bench_{args.dataset}",
        pipelines_dir=args.pipelines_dir,
        destination=dlt.destinations.postgres(credentials=args.database_url),
        dataset_name=args.dataset,
    )
    started = time.perf_counter()
    cpu_started = time.process_time()
    pipeline.run(source, loader_file_format=args.loader_file_format)
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_seconds += children.ru_utime + children.ru_stime

    with pipeline.sql_client() as client:
        rows = client.execute_sql(f"SELECT count(*) FROM {client.make_qualified_table_name(args.table)}")[0][0]
    peak_kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    print(json.dumps({"seconds": seconds, "rows": rows, "peak_rss_mb": peak_kb / 1024, "cpu_seconds": cpu_seconds}))


if __name__ == "__main__":
    main()
