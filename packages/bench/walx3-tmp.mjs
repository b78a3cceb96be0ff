import pg from 'pg';
import { randomBytes } from 'node:crypto';
const c = new pg.Client(process.env.DATABASE_URL); await c.connect();
const N = 3000;
async function run(name, ddl, claim, done) {
  await c.query(`drop table if exists wx`); for (const d of ddl) await c.query(d);
  const one = async () => { const id='noop.orders.create:'+randomBytes(16).toString('hex'); await c.query({name:'c'+name, text:claim.sql, values:claim.v(id)}); const r = await c.query({name:'d'+name,text:done.sql, values:done.v(id)}); if (r.rowCount!==1) throw new Error('x'); };
  for (let i=0;i<300;i++) await one();
  await c.query('checkpoint');
  const a = (await c.query('select pg_current_wal_insert_lsn() l')).rows[0].l;
  for (let i=0;i<N;i++) await one();
  const b = (await c.query('select pg_current_wal_insert_lsn() l')).rows[0].l;
  const tot = (await c.query(`select pg_wal_lsn_diff($2,$1)::float8 d`, [a,b])).rows[0].d;
  const st = (await c.query(`select "resource_manager/record_type" t, count n, combined_size rl from pg_get_wal_stats($1,$2,true) where count>0 order by 3 desc`, [a,b])).rows;
  console.log(name.padEnd(28), (tot/N).toFixed(0), st.filter(r=>r.rl/N>=5).map(r=>`${r.t} ${(r.rl/N).toFixed(0)}`).join(" | "));
}
const head = randomBytes(210), tail = randomBytes(Number(process.env.TAIL||130));
const T = Date.now();
const cols = `id text primary key, provider text not null, operation text not null, created_at bigint not null, fence bigint not null, head bytea not null, state text not null, lease_expires_at bigint, updated_at bigint not null, tail bytea`;
const claim = {sql:'insert into wx values ($1,$2,$3,$4,$5,$6,$7,$8,$9)', v:(id)=>[id,'noop','noop.orders.create',T,1,head,'dispatched',T+30000,T]};
const done = {sql:'update wx set state=$2, lease_expires_at=null, updated_at=$3, tail=$4 where id=$1 and fence=$5', v:(id)=>[id,'succeeded',T+20,tail,1]};
await run('split +brin +open', [`create table wx (${cols})`, 'create index on wx using brin (created_at)', `create index on wx (state, created_at) where state not in ('succeeded','rejected','abandoned')`], claim, done);
await c.query('drop table if exists wo'); 
await run('split +brin +opentable', [`create table wx (${cols})`, 'create index on wx using brin (created_at)', 'drop table if exists wo', 'create table wo (id text primary key)'], {sql:'with o as (insert into wo values ($1)) insert into wx values ($1,$2,$3,$4,$5,$6,$7,$8,$9)', v:claim.v}, {sql:'with o as (delete from wo where id=$1) update wx set state=$2, lease_expires_at=null, updated_at=$3, tail=$4 where id=$1 and fence=$5', v:done.v});
await run('split +brin', [`create table wx (${cols})`, 'create index on wx using brin (created_at)'], claim, done);
await c.end();
