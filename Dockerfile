# The image of docs/deployment.md's docker compose example: the repository, its dependencies
# and its static files. Settings come from the environment at run time (production.env); the
# values below only let collectstatic run at build time (it opens no database).
FROM python:3.11-slim
WORKDIR /app
COPY . .
RUN pip install --no-cache-dir . \
    && SECRET_KEY=build-only-collectstatic-0123456789abcdefghijklmnopqrstuvwxyz \
       DATABASE_URL=postgres://unused@127.0.0.1:1/unused \
       python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["gunicorn", "memory_site.wsgi:application", "--bind", "0.0.0.0:8000"]
