/** The chart of docs/benchmarks.md: per load balancer and run, convergence time against its lower bound. */
import { CORE_DEPLOY_MS, type ModeName } from './core';
import type { BenchResult } from './figures';
import { CORE_SHAPE } from './workload';

const COLORS: Record<ModeName, string> = {
  heartbeat: '#1f77b4',
  'no-budget': '#aec7e8',
  'heartbeat-1lb': '#393b79',
  'no-budget-1lb': '#9c9ede',
  unwatched: '#bcbd22',
  prior: '#8c564b',
  'no-recent-reads': '#c49c94',
  'aim-25': '#e377c2',
  'aim-75': '#7f7f7f',
  'heartbeat-500': '#17becf',
  retry: '#ff7f0e',
  'retry-fast': '#2ca02c',
  waves: '#d62728',
  'waves-jitter': '#9467bd',
};

function marker(mode: ModeName, x: number, y: number): string {
  const c = COLORS[mode];
  const f = (n: number) => n.toFixed(1);
  switch (mode) {
    case 'heartbeat':
      return `<circle cx="${f(x)}" cy="${f(y)}" r="4.5" fill="${c}" fill-opacity="0.85"/>`;
    case 'heartbeat-1lb':
      return `<rect x="${f(x - 3.5)}" y="${f(y - 3.5)}" width="7" height="7" rx="3.5" fill="${c}" fill-opacity="0.85"/>`;
    case 'no-budget':
    case 'no-budget-1lb':
      return `<circle cx="${f(x)}" cy="${f(y)}" r="4.5" fill="none" stroke="${c}" stroke-width="2"/>`;
    case 'unwatched':
    case 'prior':
    case 'no-recent-reads':
    case 'aim-25':
    case 'aim-75':
      return `<circle cx="${f(x)}" cy="${f(y)}" r="3" fill="${c}" fill-opacity="0.85"/>`;
    case 'heartbeat-500':
      return `<circle cx="${f(x)}" cy="${f(y)}" r="4" fill="none" stroke="${c}" stroke-width="2"/>`;
    case 'retry':
      return `<rect x="${f(x - 4)}" y="${f(y - 4)}" width="8" height="8" fill="${c}" fill-opacity="0.85"/>`;
    case 'retry-fast':
      return `<path d="M${f(x)} ${f(y - 5)} L${f(x + 5)} ${f(y + 4)} L${f(x - 5)} ${f(y + 4)} Z" fill="${c}" fill-opacity="0.85"/>`;
    case 'waves':
      return `<path d="M${f(x)} ${f(y - 5.5)} L${f(x + 5.5)} ${f(y)} L${f(x)} ${f(y + 5.5)} L${f(x - 5.5)} ${f(y)} Z" fill="${c}" fill-opacity="0.85"/>`;
    case 'waves-jitter':
      return `<path d="M${f(x)} ${f(y - 5)} L${f(x + 5)} ${f(y)} L${f(x)} ${f(y + 5)} L${f(x - 5)} ${f(y)} Z" fill="none" stroke="${c}" stroke-width="2"/>`;
  }
}

const esc = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Scatter plot: per load balancer and run, convergence time (y) against its lower bound (x), with y = x and y = 1.25 x. */
export function svgChart(r: BenchResult): string {
  const W = 720;
  const H = 500;
  const m = { left: 64, right: 200, top: 48, bottom: 56 };
  const pts = r.core.flatMap((c) => c.loadBalancers.map((l) => ({ mode: c.mode, x: l.boundMs / 1000, y: l.convergedMs / 1000 })));
  const maxX = Math.ceil(Math.max(1, ...pts.map((p) => p.x)) + 0.5);
  const maxY = Math.ceil(Math.max(1, ...pts.map((p) => p.y)) * 1.05);
  const minX = Math.max(0, Math.floor(Math.min(...pts.map((p) => p.x)) - 1));
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const X = (v: number) => m.left + ((v - minX) / (maxX - minX)) * pw;
  const Y = (v: number) => m.top + ph - (v / maxY) * ph;
  const o: string[] = [];
  o.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  o.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  o.push(`<text x="${m.left}" y="22" font-size="15" font-weight="bold">Convergence time against the lower bound, per load balancer</text>`);
  o.push(
    `<text x="${m.left}" y="38" fill="#555">${esc(`${CORE_SHAPE.objectsPerLoadBalancer} objects per load balancer, deploy ${CORE_DEPLOY_MS.min}-${CORE_DEPLOY_MS.max} ms, seed ${r.seed}, ${r.reps} repetition(s)${r.quick ? ' (quick)' : ''}`)}</text>`,
  );
  const stepX = maxX - minX > 12 ? 2 : 1;
  for (let v = minX; v <= maxX; v += stepX) {
    o.push(`<line x1="${X(v)}" y1="${m.top}" x2="${X(v)}" y2="${m.top + ph}" stroke="#eee"/>`);
    o.push(`<text x="${X(v)}" y="${m.top + ph + 16}" text-anchor="middle">${v}</text>`);
  }
  const stepY = maxY > 16 ? 2 : 1;
  for (let v = 0; v <= maxY; v += stepY) {
    o.push(`<line x1="${m.left}" y1="${Y(v)}" x2="${m.left + pw}" y2="${Y(v)}" stroke="#eee"/>`);
    o.push(`<text x="${m.left - 8}" y="${Y(v) + 4}" text-anchor="end">${v}</text>`);
  }
  o.push(`<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  o.push(`<text x="${m.left + pw / 2}" y="${H - 14}" text-anchor="middle">lower bound (s): longest chain of drawn deploy delays + request latency</text>`);
  o.push(`<text transform="translate(18 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">convergence time (s)</text>`);
  const line = (k: number, dash: string, label: string) => {
    const x2 = Math.min(maxX, maxY / k);
    o.push(`<line x1="${X(minX)}" y1="${Y(minX * k)}" x2="${X(x2)}" y2="${Y(x2 * k)}" stroke="#444" stroke-dasharray="${dash}"/>`);
    o.push(`<text x="${X(x2) - 4}" y="${Y(x2 * k) - 6}" text-anchor="end" fill="#444" stroke="white" stroke-width="3" paint-order="stroke">${label}</text>`);
  };
  line(1, '2 3', 'y = bound');
  line(1.25, '6 4', 'y = 1.25 x bound (target)');
  for (const p of pts) o.push(marker(p.mode, X(p.x), Y(p.y)));
  const lx = m.left + pw + 16;
  r.modes.forEach((mode, i) => {
    const y = m.top + 14 + i * 22;
    o.push(marker(mode.name, lx + 6, y - 4));
    o.push(`<text x="${lx + 18}" y="${y}">${esc(mode.name)}</text>`);
  });
  o.push(`<text x="${lx}" y="${m.top + 14 + r.modes.length * 22 + 8}" fill="#555" font-size="11">one mark per load balancer</text>`);
  o.push(`<text x="${lx}" y="${m.top + 14 + r.modes.length * 22 + 22}" fill="#555" font-size="11">and run</text>`);
  o.push('</svg>');
  return o.join('\n') + '\n';
}
