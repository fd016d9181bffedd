// Starts GraphiQL on the page's #graphiql element. A served file, not an inline script, so the
// page's Content-Security-Policy can say script-src 'self'. With data-sign-in (development
// only) it first reads the demo users and adds a "Sign in as" control that writes the
// Authorization header into GraphiQL's header editor. Whenever the headers change (chosen
// there or written by hand) the schema is fetched again with them: under TRUSTED_DOCUMENTS
// only a role that bypasses the manifest may introspect, so the page's first, anonymous
// introspection is refused, and GraphiQL's own "Re-fetch GraphQL schema" sends the headers
// the page had when it last rendered.
"use strict";

(function () {
  const root = document.getElementById("graphiql");
  const h = React.createElement;
  const url = new URL(root.dataset.endpoint, window.location.href).href;
  // Subscriptions go over the WebSocket at the same path (graphql-transport-ws, with GraphiQL's
  // bundled graphql-ws client); the header editor's headers become connection_init's payload,
  // which is where the server reads the token of a socket.
  function newFetcher() {
    return GraphiQL.createFetcher({ url: url, subscriptionUrl: url.replace(/^http/, "ws") });
  }

  function headersFor(user) {
    return JSON.stringify(user ? { Authorization: "Bearer " + user.token } : {}, null, 2);
  }

  function SignInAs(props) {
    const editors = GraphiQL.React.useEditorContext({ nonNull: true });
    const [chosen, setChosen] = React.useState("");
    // GraphiQL makes its header editor once CodeMirror has loaded, asynchronously: a choice
    // made before then waits here and is written when the editor appears.
    const pending = React.useRef(null);
    const headerEditor = editors.headerEditor;
    React.useEffect(
      function () {
        if (headerEditor && pending.current !== null) {
          headerEditor.setValue(pending.current);
          pending.current = null;
          props.onSignIn();
        }
      },
      [headerEditor],
    );
    function choose(event) {
      const index = event.target.value;
      setChosen(index);
      const headers = headersFor(index === "" ? null : props.users[Number(index)]);
      if (headerEditor) {
        headerEditor.setValue(headers);
        props.onSignIn();
      } else {
        pending.current = headers;
      }
    }
    const options = [h("option", { key: "", value: "" }, "nobody (no token)")].concat(
      props.users.map(function (user, index) {
        return h("option", { key: index, value: String(index) }, user.label);
      }),
    );
    return h(
      "label",
      { className: "hr-sign-in" },
      h("span", null, "Sign in as"),
      h("select", { id: "hr-sign-in-as", value: chosen, onChange: choose }, options),
    );
  }

  function render(users) {
    const page = ReactDOM.createRoot(root);
    const props = { fetcher: newFetcher(), shouldPersistHeaders: false };
    const children = [];
    function draw() {
      page.render(h(GraphiQL, props, ...children));
    }
    // GraphiQL introspects again when its fetcher changes, reading the header editor as it
    // renders: a new fetcher, once the headers are in the editor, fetches the schema with them.
    function signedIn() {
      props.fetcher = newFetcher();
      draw();
    }
    let editing = null;
    props.onEditHeaders = function () {
      clearTimeout(editing);
      editing = setTimeout(signedIn, 500); // once the typing has stopped
    };
    if (users) {
      // Show the header editor, so the token the control sets is visible.
      props.defaultEditorToolsVisibility = "headers";
      children.push(h(GraphiQL.Logo, { key: "logo" }, h(SignInAs, { users: users, onSignIn: signedIn })));
    }
    draw();
  }

  const signIn = root.dataset.signIn;
  if (!signIn) {
    render(null);
    return;
  }
  fetch(signIn, { headers: { Accept: "application/json" } })
    .then(function (response) {
      if (!response.ok) {
        throw new Error("GET " + signIn + " answered HTTP " + response.status);
      }
      return response.json();
    })
    .then(function (body) {
      render(body.users);
    })
    .catch(function (error) {
      console.error("Sign in as is unavailable:", error);
      render(null);
    });
})();
