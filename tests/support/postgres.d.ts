/** A real PostgreSQL server in a temporary folder (see postgres.js); stopped when the test file ends. */
export interface Server {
  readonly dir: string;
  readonly port: number;
  readonly password: string;
  readonly tls: boolean;
  /** `postgres://chokepoint@127.0.0.1:<port>/chokepoint`, without the password. */
  readonly url: string;
  readonly urlWithPassword: string;
  /** The CA that signed the server's certificate; throws for a server started without TLS. */
  readonly caCert: string;
  /** `CHOKEPOINT_COORDINATION_URL` and `PGPASSWORD`. */
  env(): { CHOKEPOINT_COORDINATION_URL: string; PGPASSWORD: string };
  /** The server's log so far. */
  log(): string;
  /** SIGKILL to the postmaster and its processes; resolves once they are gone and the port refuses. */
  kill(): Promise<void>;
  /** `pg_ctl stop -m fast`; `remove` also deletes the folder for good. */
  stop(options?: { remove?: boolean }): Promise<void>;
  /** Starts again on the same port and data, after kill() or stop(). */
  restart(): Promise<void>;
  /** Ends every other session on the database. */
  terminateConnections(): Promise<void>;
  /** `psql -At`: its output without the last newline; rejects with psql's stderr. */
  psql(sql: string, options?: { env?: Record<string, string>; database?: string }): Promise<string>;
}
/** A new server, ready, with the database `chokepoint`; `tls`: ssl = on with a test CA's certificate. */
export function start(options?: { tls?: boolean }): Promise<Server>;
export const USER: string;
export const DATABASE: string;
