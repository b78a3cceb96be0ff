import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runConformance } from '@retrysafe/testkit/conformance';
import { afterAll } from 'vitest';
import { drills } from '../src/sandbox/index.js';

// The shared drill for one operation of each pattern (IETF key, async request-reply, ETag, client
// token): axios → fault proxy → the pattern's loopback sandbox. src/sandbox/http-drills.ts holds the
// setups; the CLI's `retrysafe drill` runs the same ones.
const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-drill-http-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));
for (const drill of drills) runConformance({ ...drill, outDir: join(outDir, drill.name) });
