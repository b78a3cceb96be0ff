// The shared duplicate-execution drill on every HubSpot operation: the SDK's generated API classes →
// the testkit fault proxy → the loopback HubSpot sandbox, on the runner's virtual clock. The setup is
// src/sandbox/hubspot-drills.ts; the CLI's `retrysafe drill` runs the same one. contacts.update and
// objects.upsert are idempotent by nature (their cards say so), which the drill's criteria honour.
import { runConformance } from '@retrysafe/testkit/conformance';
import { hubSpotDrill } from '../src/sandbox/index.js';

runConformance(hubSpotDrill);
