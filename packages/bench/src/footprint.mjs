// `pnpm bench` footprint part: what a user installs and how long the import takes.
// Packs the workspace packages (`pnpm pack`: workspace ranges become real ones), installs each set
// into an empty npm project in ONE `npm install` of the tarballs (so npm never looks a sibling up on
// a registry; vendor SDKs come from the configured registry, npm's cache warm), then measures:
//   install wall time, node_modules size (apparent bytes), package count, and the cold import time of
//   each entry in a fresh process (`node -e "await import(...)"`, in-process time, median of N).
//
//   node src/footprint.mjs [--quick] [--runs=10]   (also run by bench.mjs --only=footprint)
import { execFileSync, spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
/** Every publishable package of the workspace: its folder and the workspace packages it depends on. */
function workspacePackages() {
  const dirs = ['packages', 'adapters'].flatMap((top) => readdirSync(join(root, top)).map((d) => join(top, d)));
  const out = {};
  for (const dir of dirs) {
    let pkg;
    try {
      pkg = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'));
    } catch {
      continue;
    }
    if (!pkg.private)
      out[pkg.name] = { dir, deps: Object.keys(pkg.dependencies ?? {}).filter((d) => d.startsWith('@retrysafe/')) };
  }
  return out;
}
const WORKSPACE = workspacePackages();

/** `names` and every workspace package they depend on: installed together, so npm never looks one up on a registry. */
function withWorkspaceDeps(names) {
  const seen = new Set();
  const visit = (n) => {
    if (seen.has(n)) return;
    seen.add(n);
    for (const d of WORKSPACE[n].deps) visit(d);
  };
  names.forEach(visit);
  return [...seen];
}

/** The sets measured: what the user asks npm for, and the modules whose cold import is timed. */
export const SETS = [
  {
    name: 'core + SQLite + stripe',
    packages: withWorkspaceDeps(['@retrysafe/core', '@retrysafe/ledger-sqlite', '@retrysafe/stripe']),
    imports: ['@retrysafe/core', '@retrysafe/ledger-sqlite', '@retrysafe/stripe'],
  },
  {
    name: 'core + PostgreSQL',
    packages: withWorkspaceDeps(['@retrysafe/core', '@retrysafe/ledger-postgres']),
    imports: ['@retrysafe/core', '@retrysafe/ledger-postgres'],
  },
  { name: 'CLI', packages: withWorkspaceDeps(['@retrysafe/cli']), imports: ['@retrysafe/cli'] },
];

function pack(dest) {
  const out = {};
  for (const [name, { dir }] of Object.entries(WORKSPACE)) {
    const before = new Set(readdirSync(dest));
    execFileSync('pnpm', ['pack', '--pack-destination', dest], { cwd: join(root, dir), stdio: 'pipe' });
    const added = readdirSync(dest).filter((f) => !before.has(f) && f.endsWith('.tgz'));
    if (added.length !== 1) throw new Error(`pnpm pack in ${dir} produced ${added.length} tarballs`);
    out[name] = join(dest, added[0]);
  }
  return out;
}

/** Apparent size in bytes and package count (directories with a package.json directly under a node_modules). */
function measureTree(nm) {
  let bytes = 0;
  let packages = 0;
  const walk = (d, underNodeModules) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isSymbolicLink()) continue;
      if (e.isDirectory()) {
        if (underNodeModules && !e.name.startsWith('.')) {
          if (e.name.startsWith('@')) {
            for (const s of readdirSync(p, { withFileTypes: true }))
              if (s.isDirectory()) packages += countIfPackage(join(p, s.name));
          } else packages += countIfPackage(p);
        }
        walk(p, e.name === 'node_modules');
      } else bytes += lstatSync(p).size;
    }
  };
  const countIfPackage = (p) => {
    try {
      lstatSync(join(p, 'package.json'));
      return 1;
    } catch {
      return 0;
    }
  };
  walk(nm, true);
  return { bytes, packages };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Cold import of `spec` in a fresh process, `runs` times: in-process milliseconds, median and all. */
function coldImport(cwd, spec, runs) {
  const times = [];
  for (let i = 0; i < runs; i++) {
    const r = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const c = process.cpuUsage(); const t = performance.now(); await import(${JSON.stringify(spec)}); const w = performance.now() - t; const u = process.cpuUsage(c); process.stdout.write(JSON.stringify([w, (u.user + u.system) / 1000]));`,
      ],
      { cwd, encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`import ${spec} failed in ${cwd}: ${r.stderr}`);
    times.push(JSON.parse(r.stdout));
  }
  const r1 = (x) => Math.round(x * 10) / 10;
  // Wall time is what a user waits; CPU time (user + system) is what the import costs, and moves less
  // when other processes share the cores.
  return {
    medianMs: r1(median(times.map((t) => t[0]))),
    cpuMedianMs: r1(median(times.map((t) => t[1]))),
    runs: times.map((t) => r1(t[0])),
  };
}

async function measureSet(set, tarballs, runs) {
  const dir = mkdtempSync(join(tmpdir(), 'retrysafe-footprint-'));
  try {
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'footprint', version: '1.0.0', private: true, type: 'module' }),
    );
    const specs = set.packages.map((n) => tarballs[n]);
    const t0 = performance.now();
    const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...specs], {
      cwd: dir,
      encoding: 'utf8',
    });
    const installMs = Math.round(performance.now() - t0);
    if (r.status !== 0) throw new Error(`npm install for ${set.name} failed: ${r.stderr}`);
    const tree = measureTree(join(dir, 'node_modules'));
    const imports = Object.fromEntries(set.imports.map((spec) => [spec, coldImport(dir, spec, runs)]));
    return {
      name: set.name,
      installMs,
      sizeMb: Math.round((tree.bytes / 1e6) * 10) / 10,
      packages: tree.packages,
      imports,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runFootprint({ quick = false, runs = quick ? 3 : 10 } = {}) {
  const dest = mkdtempSync(join(tmpdir(), 'retrysafe-packs-'));
  mkdirSync(dest, { recursive: true });
  try {
    const tarballs = pack(dest);
    const rows = [];
    for (const set of SETS) rows.push(await measureSet(set, tarballs, runs));
    return { node: process.version, runs, rows };
  } finally {
    rmSync(dest, { recursive: true, force: true });
  }
}

export function printFootprint(f) {
  console.log(
    `node ${f.node}; cold import = in-process time of the first import in a fresh process, median of ${f.runs}`,
  );
  const head = ['set', 'install', 'node_modules', 'packages', 'cold import, wall (cpu), median'];
  const table = [
    head,
    ...f.rows.map((r) => [
      r.name,
      `${(r.installMs / 1000).toFixed(1)} s`,
      `${r.sizeMb} MB`,
      String(r.packages),
      Object.entries(r.imports)
        .map(([k, v]) => `${k} ${v.medianMs} ms (cpu ${v.cpuMedianMs} ms)`)
        .join(', '),
    ]),
  ];
  const widths = head.map((_, i) => Math.max(...table.map((row) => row[i].length)));
  for (const row of table) console.log(row.map((c, i) => c.padEnd(widths[i])).join('  '));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = new Set(process.argv.slice(2));
  const runsArg = process.argv.find((a) => a.startsWith('--runs='));
  const f = await runFootprint({ quick: args.has('--quick'), ...(runsArg ? { runs: Number(runsArg.slice(7)) } : {}) });
  printFootprint(f);
  console.log(`JSON ${JSON.stringify(f)}`);
}
