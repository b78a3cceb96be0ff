import { DBOSClient } from '@dbos-inc/dbos-sdk';
const c = await DBOSClient.create({ systemDatabaseUrl: process.env.DATABASE_URL, applicationName: 'proto2' });
for (let i = 0; i < 3; i++) await c.enqueue({ workflowName: 'wf', queueName: 'q', workflowID: 'p2-' + Date.now() + '-' + i }, i);
await c.destroy();
