import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { openLedger } from '@retrysafe/config';
import { createRunner, jsonlHandoffSink } from '@retrysafe/core';
import { ledgerWithEnvKeys, receiptKeyFromEnv } from '../env-keys.js';
import { serveHttp, serveStdio } from '../server.js';
import { createFenceAdapter } from './fence-adapter.js';
import { loadFenceConfig } from './fence-config.js';
import { createFenceServer } from './fence-server.js';
import { probeTool } from './probe.js';
import { connectUpstream, type UpstreamTarget } from './upstream.js';

/** Thrown for bad command-line use: printed as one line, exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

interface Parsed {
  readonly flags: Map<string, string | true>;
  readonly rest: readonly string[];
}

function parse(argv: readonly string[], valued: readonly string[]): Parsed {
  const flags = new Map<string, string | true>();
  const dashdash = argv.indexOf('--');
  const head = dashdash >= 0 ? argv.slice(0, dashdash) : argv;
  for (let i = 0; i < head.length; i++) {
    const a = head[i]!;
    if (!a.startsWith('--')) throw new UsageError(`unexpected argument ${JSON.stringify(a)}`);
    if (valued.includes(a)) {
      const v = head[i + 1];
      if (v === undefined) throw new UsageError(`${a} needs a value`);
      flags.set(a, v);
      i++;
    } else flags.set(a, true);
  }
  return { flags, rest: dashdash >= 0 ? argv.slice(dashdash + 1) : [] };
}

function target(p: Parsed): UpstreamTarget {
  const url = p.flags.get('--upstream-url') ?? p.flags.get('--url');
  if (typeof url === 'string') {
    const u = new URL(url);
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname) && u.protocol !== 'https:') throw new UsageError('an upstream URL must be https, or http on loopback');
    return { url };
  }
  if (p.rest.length === 0) throw new UsageError('name the upstream: -- <command …> (stdio) or --upstream-url URL (streamable HTTP)');
  return { command: p.rest[0]!, args: p.rest.slice(1) };
}

function jsonFlag(p: Parsed, flag: string): Record<string, unknown> | undefined {
  const v = p.flags.get(flag);
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new UsageError(`${flag} needs a JSON object`);
  try {
    const o = JSON.parse(v) as unknown;
    if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error('not an object');
    return o as Record<string, unknown>;
  } catch {
    throw new UsageError(`${flag} must be a JSON object`);
  }
}

const num = (p: Parsed, flag: string): number | undefined => {
  const v = p.flags.get(flag);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isFinite(n) || n < 0) throw new UsageError(`${flag} must be a non-negative number`);
  return n;
};

/** `retrysafe-mcp wrap --config fence.yaml [--http [--port N] [--allow-host H] [--allow-origin O]] (-- <upstream command…> | --upstream-url URL)` */
export async function runWrap(argv: readonly string[], log: (line: string) => void = (l) => process.stderr.write(l + '\n')): Promise<void> {
  const p = parse(argv, ['--config', '--port', '--upstream-url', '--allow-host', '--allow-origin']);
  const configPath = p.flags.get('--config');
  if (typeof configPath !== 'string') throw new UsageError('wrap needs --config <fence.yaml>');
  const config = loadFenceConfig(configPath);
  const upstream = await connectUpstream(target(p));
  const adapter = createFenceAdapter({ config, client: upstream.client, tools: upstream.tools });
  // The same keys as the retrysafe MCP server: params encrypted at rest, receipts HMAC-sealed.
  const ledger = ledgerWithEnvKeys(await openLedger(config.ledger, config.baseDir));
  const runner = createRunner({
    ledger,
    ...(config.handoffs ? { handoff: jsonlHandoffSink(resolve(config.baseDir, config.handoffs)) } : {}),
    ...(config.policy ? { policy: config.policy } : {}),
    ...receiptKeyFromEnv(),
  });
  const make = () => createFenceServer({ runner, ledger, adapter, upstream });
  const fenced = Object.keys(config.tools);
  const passed = upstream.tools.map((t) => t.name).filter((n) => !fenced.includes(n));
  log(`retrysafe fence: ${fenced.length} fenced (${fenced.join(', ')}), ${passed.length} passed through${passed.length ? ` (${passed.join(', ')})` : ''}`);
  if (p.flags.has('--http')) {
    // The same guard as the retrysafe MCP server: loopback Host/Origin allow-lists and a bearer token.
    const list = (flag: string) => {
      const v = p.flags.get(flag);
      return typeof v === 'string' ? v.split(',').map((x) => x.trim()).filter(Boolean) : [];
    };
    const configured = process.env.RETRYSAFE_MCP_TOKEN;
    const h = await serveHttp(make, { port: num(p, '--port') ?? 0, allowedHosts: list('--allow-host'), allowedOrigins: list('--allow-origin'), ...(configured ? { token: configured } : {}) });
    log(`retrysafe fence on ${h.url}`);
    log(configured ? 'bearer token: from RETRYSAFE_MCP_TOKEN' : `bearer token (send as "Authorization: Bearer <token>"): ${h.token}`);
  } else {
    await serveStdio(make());
  }
}

/**
 * `retrysafe probe --tool T --args JSON --count-tool T --count-path P [--count-args JSON] [--match JSON]
 *  [--concurrent N] [--timeout-ms N] [--settle-ms N] [--receipt FILE] (-- <command…> | --url URL)`
 * Exit 0: at most once; 1: duplicates; 3: no effect seen.
 */
export async function runProbe(argv: readonly string[], out: (line: string) => void = (l) => process.stdout.write(l + '\n')): Promise<number> {
  const p = parse(argv, ['--tool', '--args', '--count-tool', '--count-args', '--count-path', '--match', '--concurrent', '--timeout-ms', '--settle-ms', '--receipt', '--url']);
  const tool = p.flags.get('--tool');
  const countTool = p.flags.get('--count-tool');
  const countPath = p.flags.get('--count-path');
  if (typeof tool !== 'string' || typeof countTool !== 'string' || typeof countPath !== 'string') throw new UsageError('probe needs --tool, --count-tool and --count-path');
  const args = jsonFlag(p, '--args') ?? {};
  const upstream = await connectUpstream(target(p), 'retrysafe-probe');
  try {
    const countArgs = jsonFlag(p, '--count-args');
    const match = jsonFlag(p, '--match');
    const concurrent = num(p, '--concurrent');
    const timeoutMs = num(p, '--timeout-ms');
    const settleMs = num(p, '--settle-ms');
    const receipt = await probeTool({
      client: upstream.client,
      tool,
      args,
      countTool,
      countPath,
      ...(countArgs ? { countArgs } : {}),
      ...(match ? { match } : {}),
      ...(concurrent !== undefined ? { concurrent } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(settleMs !== undefined ? { settleMs } : {}),
    });
    const file = p.flags.get('--receipt');
    if (typeof file === 'string') writeFileSync(file, JSON.stringify(receipt, null, 2) + '\n');
    out(receipt.summary);
    out(`calls: ${receipt.calls.map((c) => `${c.phase}=${c.answer}`).join(' ')}; effects counted by ${countTool}: ${receipt.before} → ${receipt.after}`);
    return receipt.verdict === 'at-most-once' ? 0 : receipt.verdict === 'duplicates' ? 1 : 3;
  } finally {
    await upstream.close();
  }
}
