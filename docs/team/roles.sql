-- roles.sql: temper's roles and database on a PostgreSQL server (docs/team.md).
-- Run once, as a superuser:  sudo -u postgres psql -f docs/team/roles.sql
-- then give each role a password (\password temper_tuner) or a certificate.
CREATE ROLE temper_admin LOGIN;    -- owns the database and its schema; runs upgrades
CREATE ROLE temper_tuner LOGIN;    -- `temper tune` and `temper refine`: reads and writes records
CREATE ROLE temper_build LOGIN;    -- `temper build` and `temper run --db`: reads only
CREATE DATABASE temper OWNER temper_admin;
REVOKE ALL ON DATABASE temper FROM PUBLIC;
GRANT CONNECT ON DATABASE temper TO temper_admin, temper_tuner, temper_build;
