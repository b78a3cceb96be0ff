#!/usr/bin/env node
import { createAdapters, exposedOperations, loadConfig, openLedger } from '@retrysafe/config';
import { createRunner, jsonlHandoffSink } from '@retrysafe/core';
import { ledgerWithEnvKeys, receiptKeyFromEnv } from './env-keys.js';
import { createRetrysafeMcpServer, serveHttp, serveStdio } from './server.js';

// retrysafe-mcp --config retrysafe.yaml [--http [--port N] [--allow-host H]… [--allow-origin O]…]
// The HTTP bearer token comes from RETRYSAFE_MCP_TOKEN, else one is generated and printed to stderr.
// retrysafe-mcp wrap --config fence.yaml [--http [--port N]] -- <upstream command…>   (fence another MCP server)
// retrysafe-mcp probe --tool T --args JSON --count-tool T --count-path P -- <server command…>
const args = process.argv.slice(2);
if (args[0] === 'wrap' || args[0] === 'probe') {
  const { runWrap, runProbe, UsageError } = await import('./fence/fence-cli.js');
  try {
    if (args[0] === 'wrap') await runWrap(args.slice(1));
    else process.exitCode = await runProbe(args.slice(1));
  } catch (e) {
    process.stderr.write(`retrysafe-mcp ${args[0]}: ${(e as Error).message}\n`);
    process.exit(e instanceof UsageError || (e as { code?: unknown }).code === 'RETRYSAFE_FENCE_CONFIG' ? 2 : 1);
  }
} else {
const at = (flag: string) => { const i = args.indexOf(flag); return i >= 0 ? args[i + 1] : undefined; };
const configPath = at('--config') ?? process.env.RETRYSAFE_CONFIG;
if (!configPath) {
  process.stderr.write('usage: retrysafe-mcp --config <retrysafe.json|yaml> [--http [--port N] [--allow-host NAME[:PORT]] [--allow-origin ORIGIN]]\n');
  process.exit(2);
}
try {
  const config = loadConfig(configPath);
  const byName = await createAdapters(config);
  const adapters = Object.values(byName);
  // the config names operations by its adapter keys; tools are named by provider
  const operations = exposedOperations(config, byName);
  const ledger = ledgerWithEnvKeys(await openLedger(config.ledger, config.baseDir));
  const runner = createRunner({
    ledger,
    ...(config.handoffs ? { handoff: jsonlHandoffSink(config.handoffs) } : {}),
    ...(config.policy ? { policy: config.policy } : {}),
    ...(config.redact ? { redact: { fields: [...(config.redact.fields ?? [])] } } : {}),
    ...receiptKeyFromEnv(),
  });
  const make = () => createRetrysafeMcpServer({ runner, ledger, adapters, ...(operations ? { operations } : {}) });
  if (args.includes('--http')) {
    const all = (flag: string) => args.flatMap((a, i) => (a === flag && args[i + 1] ? args[i + 1]!.split(',') : []));
    const configured = process.env.RETRYSAFE_MCP_TOKEN;
    const h = await serveHttp(make, {
      port: Number(at('--port') ?? 0),
      allowedHosts: all('--allow-host'),
      allowedOrigins: all('--allow-origin'),
      ...(configured ? { token: configured } : {}),
    });
    process.stderr.write(`retrysafe MCP server on ${h.url}\n`);
    process.stderr.write(configured ? 'bearer token: from RETRYSAFE_MCP_TOKEN\n' : `bearer token (send as "Authorization: Bearer <token>"): ${h.token}\n`);
  } else {
    await serveStdio(make());
  }
} catch (e) {
  process.stderr.write(`retrysafe-mcp: ${(e as Error).message}\n`);
  process.exit(1);
}
}
