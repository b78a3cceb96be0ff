import { asBusinessOperationId, type LookupContext, type OperationName } from '@retrysafe/contract';
import { executeContext, lookupContext } from '@retrysafe/testkit/conformance';
import type { SlackAdapter } from '../src/index.js';

export const TOKEN = 'xoxb-test-token-not-a-secret';
export const CHANNEL = 'C0TEST0001';

export const postParams = (i = 0) => ({ channel: CHANNEL, text: `Deploy ${i} finished` });

/** One doExecute, or doLookup, with the context the runner would build for the business-operation id `id`. */
export const execute = (adapter: SlackAdapter, operation: OperationName<SlackAdapter>, params: unknown, id: string) =>
  adapter.doExecute(operation, params, executeContext(adapter, operation, asBusinessOperationId(id)));
export const lookup = (
  adapter: SlackAdapter,
  operation: OperationName<SlackAdapter>,
  params: unknown,
  id: string,
  over?: Partial<LookupContext>,
) => adapter.doLookup(operation, lookupContext(adapter, operation, asBusinessOperationId(id), params, over));
