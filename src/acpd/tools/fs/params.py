"""Parameters of the file tools, as the seeds name them. Unknown keys are refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

PATH_HELP = "Path relative to the workspace, or absolute inside it"


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadParams(Params):
    path: str = Field(min_length=1, description="File to read. " + PATH_HELP)
    offset: int | None = Field(None, ge=1, description="First line to read (1-based)")
    limit: int | None = Field(None, ge=1, description="Maximum number of lines to read")


class WriteParams(Params):
    path: str = Field(min_length=1, description="File to create or replace. " + PATH_HELP)
    content: str = Field(description="The whole new content of the file")


class EditParams(Params):
    path: str = Field(min_length=1, description="File to edit. " + PATH_HELP)
    old_string: str = Field(
        min_length=1, description="Exact text to replace; it must occur exactly once"
    )
    new_string: str = Field(description="Text to put in its place")


class ListDirectoryParams(Params):
    path: str = Field(".", min_length=1, description="Directory to list. " + PATH_HELP)


class FindPathParams(Params):
    path: str = Field(".", min_length=1, description="Directory to search. " + PATH_HELP)
    pattern: str = Field(
        min_length=1,
        description="Glob relative to path: * and ? within a name, ** across directories "
        "(e.g. **/*.py)",
    )


class GrepParams(Params):
    pattern: str = Field(min_length=1, description="Regular expression (Python syntax)")
    path: str = Field(".", min_length=1, description="File or directory to search. " + PATH_HELP)
    case_sensitive: bool = Field(False, description="Match case exactly")


class PathParams(Params):
    path: str = Field(min_length=1, description=PATH_HELP)


class SourceDestinationParams(Params):
    source: str = Field(min_length=1, description="Existing file or directory. " + PATH_HELP)
    destination: str = Field(
        min_length=1, description="New path; it must not exist yet. " + PATH_HELP
    )
