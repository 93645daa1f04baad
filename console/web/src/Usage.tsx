import { FormEvent, useEffect, useMemo, useRef, useState } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { Alerts, AlertsSection, InvoicesSection, OperationsSection, PlanSection } from './Billing';
import { FailureAlert } from './FailureAlert';
import { useAnswer } from './useAnswer';

// Usage and billing (owners and admins): GET /console/api/usage runs the operation GET /api/v1/usage
// runs, so the chart, the table and the API answer the same numbers; the plan, alerts, operations
// and invoices below are the operations of their /api/v1 routes too (Billing.tsx).

interface KindUsage { kind: string; operations: number; amount: string }
interface Usage {
  from: string;
  to: string;
  currency: string;
  total: string;
  totalExact: string;
  byKind: KindUsage[];
  daily: Array<{ date: string; byKind: KindUsage[] }>;
}

type Measure = 'amount' | 'operations';

/** What the chart is drawn from: one value per day for each kind (0 on a day the kind was not used). */
export interface ChartSeries { measure: Measure; dates: string[]; series: Array<{ kind: string; values: number[] }> }

export function seriesOf(usage: Usage, measure: Measure): ChartSeries {
  const kinds = [...new Set(usage.daily.flatMap((day) => day.byKind.map((k) => k.kind)))].sort();
  return {
    measure,
    dates: usage.daily.map((day) => day.date),
    series: kinds.map((kind) => ({
      kind,
      values: usage.daily.map((day) => {
        const used = day.byKind.find((k) => k.kind === kind);
        return used ? (measure === 'amount' ? Number(used.amount) : used.operations) : 0;
      }),
    })),
  };
}

const COLOURS = ['#2a6fdb', '#d9822b', '#2b9a66', '#b8336a', '#6c5ce7', '#8a6d3b', '#00838f', '#c0392b'];
const isoDay = (date: Date) => date.toISOString().slice(0, 10);
const daysAgo = (n: number) => isoDay(new Date(Date.now() - n * 86_400_000));

function UsageChart({ chart }: { chart: ChartSeries }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (!element) return undefined;
    const xs = chart.dates.map((date) => Date.parse(`${date}T00:00:00Z`) / 1000);
    const plot = new uPlot({
      width: Math.max(320, element.clientWidth),
      height: 280,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      series: [{ label: 'Day' }, ...chart.series.map((s, i) => ({ label: s.kind, stroke: COLOURS[i % COLOURS.length], width: 2, points: { show: true } }))],
      axes: [{}, { label: chart.measure === 'amount' ? 'USD' : 'operations', size: 70 }],
      scales: { x: { time: true } },
    }, [xs, ...chart.series.map((s) => s.values)], element);
    return () => plot.destroy();
  }, [chart]);
  // The points the chart draws, for anyone (or any test) that reads the page rather than the canvas.
  return <figure aria-label="Daily usage chart" data-chart={JSON.stringify(chart)} className="card chart"><div ref={box} /></figure>;
}

export function UsagePage() {
  const [range, setRange] = useState({ from: daysAgo(29), to: daysAgo(0) });
  const [measure, setMeasure] = useState<Measure>('amount');
  const daily = useAnswer<{ usage: Usage }>(`/usage?from=${encodeURIComponent(range.from)}&to=${encodeURIComponent(range.to)}`);
  const loadedAlerts = useAnswer<{ alerts: Alerts }>('/usage/alerts');
  // What the last save answered, over what was loaded.
  const [savedAlerts, setSavedAlerts] = useState<Alerts | undefined>(undefined);
  const alerts = savedAlerts ?? loadedAlerts.answer?.alerts;
  // The range asked for: until its answer comes, the last range's stays shown.
  const usage = daily.answer?.usage;

  const chart = useMemo(() => (usage ? seriesOf(usage, measure) : undefined), [usage, measure]);

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setRange({ from: String(form.get('from')), to: String(form.get('to')) });
  }

  return (
    <section>
      <h1>Usage</h1>
      <form onSubmit={submit} aria-label="Date range" className="row card">
        <label>From <input name="from" type="date" defaultValue={range.from} required /></label>
        <label>To <input name="to" type="date" defaultValue={range.to} required /></label>
        <button type="submit">Show</button>
        <label>Measure
          <select value={measure} onChange={(e) => setMeasure(e.target.value as Measure)}>
            <option value="amount">Amount (USD)</option>
            <option value="operations">Operations</option>
          </select>
        </label>
      </form>
      <FailureAlert failure={daily.failure} fallback="Loading usage failed." />
      {!usage || !chart ? (daily.failure === undefined && <p role="status">Loading…</p>) : (
        <>
          <p aria-label="Range total">{usage.from} to {usage.to} (UTC): {usage.totalExact} {usage.currency}</p>
          {chart.series.length ? <UsageChart chart={chart} /> : <p>No metered usage in this range.</p>}
          <table aria-label="Usage by kind">
            <thead><tr><th>Kind</th><th>Operations</th><th>Amount ({usage.currency})</th></tr></thead>
            <tbody>{usage.byKind.map((k) => <tr key={k.kind}><td>{k.kind}</td><td>{k.operations}</td><td>{k.amount}</td></tr>)}</tbody>
          </table>
          <table aria-label="Daily usage">
            <thead><tr><th>Day</th><th>Kind</th><th>Operations</th><th>Amount ({usage.currency})</th></tr></thead>
            <tbody>
              {usage.daily.flatMap((day) => day.byKind.map((k) => (
                <tr key={`${day.date}-${k.kind}`}><td>{day.date}</td><td>{k.kind}</td><td>{k.operations}</td><td>{k.amount}</td></tr>
              )))}
            </tbody>
          </table>
        </>
      )}
      <PlanSection alerts={alerts} />
      <AlertsSection alerts={alerts} failure={loadedAlerts.failure} onSaved={setSavedAlerts} />
      <OperationsSection />
      <InvoicesSection />
    </section>
  );
}
