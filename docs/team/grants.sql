-- grants.sql: what each role may do with temper's tables (docs/team.md).
-- Run after the schema exists (`temper db show` as temper_admin creates it),
-- and again after an upgrade of temper that adds tables:
--   psql "postgresql://temper_admin@HOST/temper" -f docs/team/grants.sql
GRANT USAGE ON SCHEMA public TO temper_tuner, temper_build;
-- a tuner adds targets, workloads, runs, records and leases, ends its runs,
-- renews and releases leases; refine replaces its choices
GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO temper_tuner;
GRANT DELETE ON choices TO temper_tuner;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO temper_tuner;
-- a build reads
GRANT SELECT ON ALL TABLES IN SCHEMA public TO temper_build;
