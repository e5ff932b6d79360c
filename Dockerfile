# framesweep on a GPU node: the regular (CUDA) vLLM build plus framesweep and Ray.
# Build: docker compose build   (see docker-compose.yml and docs/cluster.md)
ARG VLLM_IMAGE=vllm/vllm-openai:latest
FROM ${VLLM_IMAGE}
WORKDIR /opt/framesweep
COPY pyproject.toml README.md ./
COPY engine ./engine
COPY grids ./grids
COPY tools ./tools
RUN python3 -m pip install --no-cache-dir -e ".[test]" && python3 -c "import engine.compat as c; c.write_pth()"
ENV FRAMESWEEP_CACHE=/cache/framesweep
ENTRYPOINT []
CMD ["framesweep", "--help"]
