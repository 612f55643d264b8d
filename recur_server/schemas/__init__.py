"""The API's marshmallow schemas, one module per resource: each validates a request, shapes an answer and
is written into the OpenAPI document by the flask-smorest declarations of the views that name it."""
