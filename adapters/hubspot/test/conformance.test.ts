// The shared duplicate-execution drill on every HubSpot operation: the SDK's generated API classes →
// the testkit fault proxy → the loopback HubSpot sandbox, on the runner's virtual clock. The setup is
// src/sandbox/hubspot-drills.ts; the CLI's `retrysafe drill` runs the same one. contacts.update and
// objects.upsert are idempotent by nature (their cards say so), which the drill's criteria honour.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runConformance } from '@retrysafe/testkit/conformance';
import { afterAll } from 'vitest';
import { hubSpotDrill } from '../src/sandbox/index.js';

const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-drill-hubspot-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));
runConformance({ ...hubSpotDrill, outDir });
