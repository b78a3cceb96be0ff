import { DBOS } from '@dbos-inc/dbos-sdk';
const me = process.argv[2]; const execId = process.argv[3] ?? me;
DBOS.setConfig({ name: 'proto2', systemDatabaseUrl: process.env.DATABASE_URL, logLevel: 'warn', executorID: execId });
const wf = DBOS.registerWorkflow(async (x) => {
  const a = await DBOS.runStep(async () => { console.log(me, 'step start', DBOS.workflowID, JSON.stringify(DBOS.stepStatus)); await new Promise(r => setTimeout(r, 3000)); return x; }, { name: 's1', retriesAllowed: true, maxAttempts: 2 });
  console.log(me, 'done', DBOS.workflowID);
  return a;
}, { name: 'wf' });

await DBOS.launch();
await DBOS.registerQueue("q", { workerConcurrency: 5, minPollingIntervalMs: 100 });
console.log(me, 'launched as', DBOS.executorID);
