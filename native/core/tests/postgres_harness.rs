//! The PostgreSQL harness itself (support/postgres.rs): a server starts, survives being killed and
//! restarted on the same port, cuts connections, and speaks TLS with a certificate its CA verifies.

#[path = "support/postgres.rs"]
mod postgres;

use postgres::Server;

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn a_killed_server_refuses_until_it_restarts_on_the_same_port() {
    let server = Server::start();
    assert_eq!(server.psql("select 1"), "1");
    assert_eq!(server.psql("select current_user || '@' || current_database()"), "chokepoint@chokepoint");
    assert!(!server.url().contains(server.password()), "the URL carries no password: {}", server.url());
    server.psql("create table kept (n int); insert into kept values (7)");

    server.kill();
    let refused = server.try_psql("select 1").expect_err("psql against a killed server fails");
    assert!(refused.contains("refused") || refused.contains("connect"), "{refused}");

    let port = server.port();
    server.restart();
    assert_eq!(server.port(), port);
    // Committed before the crash: an acknowledged commit survives the server's death.
    assert_eq!(server.psql("select n from kept"), "7");

    server.terminate_connections();
    server.stop();
    assert!(server.try_psql("select 1").is_err(), "a stopped server refuses");
    server.restart();
    assert_eq!(server.psql("select 1"), "1");
}

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn a_tls_server_is_verified_against_its_ca() {
    let server = Server::start_tls();
    let ca = server.ca_cert();
    let ca = ca.to_str().unwrap();
    let ssl = "select ssl from pg_stat_ssl where pid = pg_backend_pid()";
    assert_eq!(server.psql_with_env(ssl, &[("PGSSLMODE", "require")]).unwrap(), "t");
    let verified = server.psql_with_env(ssl, &[("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", ca)]);
    assert_eq!(verified.unwrap(), "t");
}
