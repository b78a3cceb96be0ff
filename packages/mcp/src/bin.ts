#!/usr/bin/env node
import { createAdapters, exposedOperations, loadConfig, openLedger } from '@retrysafe/config';
import { createRunner, jsonlHandoffSink } from '@retrysafe/core';
import { createRetrysafeMcpServer, serveHttp, serveStdio } from './server.js';

// retrysafe-mcp --config retrysafe.yaml [--http [--port N]]
const args = process.argv.slice(2);
const at = (flag: string) => { const i = args.indexOf(flag); return i >= 0 ? args[i + 1] : undefined; };
const configPath = at('--config') ?? process.env.RETRYSAFE_CONFIG;
if (!configPath) {
  process.stderr.write('usage: retrysafe-mcp --config <retrysafe.json|yaml> [--http [--port N]]\n');
  process.exit(2);
}
try {
  const config = loadConfig(configPath);
  const byName = await createAdapters(config);
  const adapters = Object.values(byName);
  // the config names operations by its adapter keys; tools are named by provider
  const operations = exposedOperations(config, byName);
  const ledger = await openLedger(config.ledger, config.baseDir);
  const runner = createRunner({
    ledger,
    ...(config.handoffs ? { handoff: jsonlHandoffSink(config.handoffs) } : {}),
    ...(config.policy ? { policy: config.policy } : {}),
    ...(config.redact ? { redact: { fields: [...(config.redact.fields ?? [])] } } : {}),
  });
  const make = () => createRetrysafeMcpServer({ runner, ledger, adapters, ...(operations ? { operations } : {}) });
  if (args.includes('--http')) {
    const h = await serveHttp(make, { port: Number(at('--port') ?? 0) });
    process.stderr.write(`retrysafe MCP server on ${h.url}\n`);
  } else {
    await serveStdio(make());
  }
} catch (e) {
  process.stderr.write(`retrysafe-mcp: ${(e as Error).message}\n`);
  process.exit(1);
}
