// A session as the docs' links expect it: the access token, a refresh that hands out
// <fresh> (counted), a sign-out (counted); and a fetch that records each response's status.
export function makeSession(token, fresh) {
  const session = {
    current: token,
    refreshes: 0,
    signOuts: 0,
    statuses: [],
    token: () => session.current,
    refresh: async () => {
      session.refreshes += 1;
      if (!fresh) throw new Error("the refresh token was refused");
      session.current = fresh;
      return fresh;
    },
    signOut: () => {
      session.signOuts += 1;
    },
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      session.statuses.push(response.status);
      return response;
    },
  };
  return session;
}

export function report(session, data, error) {
  const { refreshes, signOuts, statuses } = session;
  console.log(JSON.stringify({ data: data ?? null, error: error ? String(error) : null, refreshes, signOuts, statuses }));
}
