import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { json, num, type ParsedOptions, parseOptions, text, toStderr, toStdout, UsageError } from '../cli-options.js';
import { PROBE_COMMAND, WRAP_COMMAND } from '../commands.js';
import { serveParsed, servingParts } from '../serve-cli.js';
import { createFenceAdapter } from './fence-adapter.js';
import { loadFenceConfig } from './fence-config.js';
import { createFenceServer } from './fence-server.js';
import { probeTool } from './probe.js';
import { connectUpstream, type UpstreamTarget } from './upstream.js';

function target(p: ParsedOptions, env?: Readonly<Record<string, string | null>>): UpstreamTarget {
  const url = text(p, '--url');
  if (url !== undefined) {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new UsageError(`--url ${url} is not a URL`);
    }
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname) && u.protocol !== 'https:')
      throw new UsageError('a server URL must be https, or http on loopback');
    return { url };
  }
  if (p.rest.length === 0)
    throw new UsageError('name the server: -- <command …> (stdio) or --url URL (streamable HTTP)');
  return { command: p.rest[0]!, args: p.rest.slice(1), ...(env ? { env } : {}) };
}

/** `retrysafe-mcp wrap …` (WRAP_COMMAND). */
export async function runWrap(argv: readonly string[], log = toStderr): Promise<void> {
  const p = parseOptions(argv, WRAP_COMMAND);
  const configPath = text(p, '--config');
  if (configPath === undefined) throw new UsageError('wrap needs --config <fence.yaml>');
  const config = loadFenceConfig(configPath);
  const upstream = await connectUpstream(target(p, config.env));
  const adapter = createFenceAdapter({ config, client: upstream, tools: upstream.tools });
  const parts = await servingParts(config, config.handoffs && resolve(config.baseDir, config.handoffs));
  const make = () => createFenceServer({ ...parts, adapter, upstream });
  const fenced = Object.keys(config.tools);
  const passed = upstream.tools.map((t) => t.name).filter((n) => !fenced.includes(n));
  log(
    `retrysafe fence: ${fenced.length} fenced (${fenced.join(', ')}), ${passed.length} passed through${passed.length ? ` (${passed.join(', ')})` : ''}`,
  );
  return serveParsed(p, make, 'retrysafe fence', log);
}

/** `retrysafe-mcp probe …` (PROBE_COMMAND). Exit 0: at most once; 1: duplicates; 3: no effect seen. */
export async function runProbe(argv: readonly string[], out = toStdout): Promise<number> {
  const p = parseOptions(argv, PROBE_COMMAND);
  const tool = text(p, '--tool');
  const countTool = text(p, '--count-tool');
  const countPath = text(p, '--count-path');
  if (tool === undefined || countTool === undefined || countPath === undefined)
    throw new UsageError('probe needs --tool, --count-tool and --count-path');
  const upstream = await connectUpstream(target(p), 'retrysafe-probe');
  try {
    const receipt = await probeTool({
      client: upstream,
      tool,
      args: json(p, '--args') ?? {},
      countTool,
      countArgs: json(p, '--count-args'),
      countPath,
      match: json(p, '--match'),
      concurrent: num(p, '--concurrent'),
      timeoutMs: num(p, '--timeout-ms'),
      settleMs: num(p, '--settle-ms'),
    });
    const file = text(p, '--receipt');
    if (file !== undefined) writeFileSync(file, JSON.stringify(receipt, null, 2) + '\n');
    out(receipt.summary);
    out(
      `calls: ${receipt.calls.map((c) => `${c.phase}=${c.answer}`).join(' ')}; effects counted by ${countTool}: ${receipt.before} → ${receipt.after}`,
    );
    return receipt.verdict === 'at-most-once' ? 0 : receipt.verdict === 'duplicates' ? 1 : 3;
  } finally {
    await upstream.close();
  }
}
