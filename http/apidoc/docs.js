// Starts Swagger UI (viewer/, vendored) on svc's OpenAPI document. Paths are relative to the
// page, /docs, so the page also works behind a proxy that serves svc under a prefix.
(function () {
  var el = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: el.getAttribute("data-spec"),
    domNode: el,
    deepLinking: true,
    // Never send the document to validator.swagger.io: the page talks to svc only.
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    tryItOutEnabled: false,
  });
})();
