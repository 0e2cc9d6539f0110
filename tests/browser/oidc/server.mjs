// A real OpenID Connect provider for the team-deployment browser journey: panva's `oidc-provider`
// (OpenID-certified), configured with one confidential client and static test accounts that carry a
// `roles` claim. Sign-in uses the library's own development interactions (a login form; the login
// must name one of the accounts below; consent is granted for the test client without a prompt).
//
// Usage: node server.mjs  (environment: OIDC_PORT, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI)
// Prints one line "ready <issuer>" on stdout when it listens.
import Provider from 'oidc-provider';

const port = Number(process.env.OIDC_PORT || 0);
const issuer = `http://127.0.0.1:${port}`;
const clientId = process.env.OIDC_CLIENT_ID || 'voproshalych-eval';
const clientSecret = process.env.OIDC_CLIENT_SECRET;
const redirectUri = process.env.OIDC_REDIRECT_URI;
if (!port || !clientSecret || !redirectUri) {
  console.error('OIDC_PORT, OIDC_CLIENT_SECRET and OIDC_REDIRECT_URI are required');
  process.exit(2);
}

// The organisation's directory: login -> claims (the role claim is `roles`, as many providers emit it).
const ACCOUNTS = {
  viewer: { email: 'vera.viewer@example.org', name: 'Вера Просмотрова', roles: ['viewer'] },
  analyst: { email: 'anna.analyst@example.org', name: 'Анна Аналитикова', roles: ['analyst'] },
  admin: { email: 'adam.admin@example.org', name: 'Адам Админов', roles: ['admin'] },
};

const configuration = {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: [redirectUri],
    post_logout_redirect_uris: [redirectUri], // Streamlit's st.logout comes back to /oauth2callback
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  scopes: ['openid', 'email', 'profile', 'roles'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
    roles: ['roles'],
  },
  // the ID token carries the granted claims (Streamlit reads the user from the ID token)
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['voproshalych-eval-test-only-cookie-key'] },
  async findAccount(ctx, id) {
    const account = ACCOUNTS[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, email_verified: true, ...account };
      },
    };
  },
  // consent for the (first-party) test client without a prompt: every requested scope and claim
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile roles');
    grant.addOIDCClaims(['sub', 'email', 'email_verified', 'name', 'roles']);
    await grant.save();
    return grant;
  },
};

const provider = new Provider(issuer, configuration);
provider.listen(port, '127.0.0.1', () => {
  console.log(`ready ${issuer}`);
});
